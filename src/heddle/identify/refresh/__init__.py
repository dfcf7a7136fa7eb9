"""Refreshing imported directories from their publishers (`heddle identify refresh`)."""
