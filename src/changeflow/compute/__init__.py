"""The compute layer: maintained views, the Correction buffer and the self-correcting sink."""
