"""The assistant: the tool-calling agent loop and structured answers of the chat model."""
