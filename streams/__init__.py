"""Topics, the codec, the durable local log and the runners that bind agents to them."""
