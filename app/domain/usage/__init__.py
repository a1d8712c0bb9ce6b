"""Who holds the slots and whether they use them: usage by owner and the idle history."""
