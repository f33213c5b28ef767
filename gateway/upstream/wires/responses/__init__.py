"""The Responses wire: an upstream Responses API called statelessly."""
