"""Routing a turn over deployments, keys, retries and fallbacks; cooldowns; prices."""
