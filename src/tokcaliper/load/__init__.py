"""Load generation: prompts, the async streaming client, the one-run driver."""
