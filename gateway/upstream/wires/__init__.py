"""The wires: one package per API the gateway speaks upstream, listed in :mod:`.registry`."""
