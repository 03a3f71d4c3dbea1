SCRIPT = ["Help me file an expense", "Client dinner, $250", "Yes, confirm"]


def next_message(messages, ctx):
    turn = int(ctx.metadata["turn_number"])
    if turn > len(SCRIPT):
        return {"message": "", "goal_achieved": True, "reasoning": "submitted"}
    return {"message": SCRIPT[turn - 1], "goal_achieved": False, "reasoning": ctx.metadata.get("goal", "")}
