"""etl-craft's Python side: the API ingestion scripts import (etl_craft.scripting).

This package is embedded in the etl-craft binary and written next to each
script run; it uses the Python standard library only.
"""
