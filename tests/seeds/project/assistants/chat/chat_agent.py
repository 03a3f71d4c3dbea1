def respond(messages, ctx):
    return f"I'm fine, thank you! You said: {messages[-1].text}"
