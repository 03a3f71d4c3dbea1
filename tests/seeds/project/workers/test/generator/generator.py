def cases(messages, ctx):
    count = int(ctx.metadata["count"])
    return [
        {"input": f"Submit a ${100 * (i + 1)} taxi expense", "assertions": [{"type": "contains", "value": "confirm"}]}
        for i in range(count)
    ]
