"""HTTP routes: thin handlers that parse, call the service and shape the answer."""
