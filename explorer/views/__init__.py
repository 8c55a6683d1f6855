"""The explorer's views: one screen or widget per module."""
