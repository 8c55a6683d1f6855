"""The tile-explore terminal explorer and command line."""
