"""Text-to-JSON formatting (the SPOT formatter): data, converters, evaluation runs."""
