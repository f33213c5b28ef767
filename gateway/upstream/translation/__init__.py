"""What every wire shares when translating: output builder, tools as functions, caches."""
