"""The ``echo`` wire: a built-in offline model."""
