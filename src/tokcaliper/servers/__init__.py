"""The server under test: managed processes and the local llama.cpp default."""
