"""Model calls: the client with retries and cost, its cache, the litellm and direct routes, prices, the
adaptive limiter and the OpenAI wire format.
"""
