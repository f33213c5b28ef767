"""The Chat Completions wire (DeepSeek, Qwen, Ollama, vLLM, llama.cpp, …)."""
