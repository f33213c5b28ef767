"""The neutral transport: HTTP exchanges with a provider; the addresses it may reach."""
