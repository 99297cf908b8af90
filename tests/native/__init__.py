"""Helpers for the native scanner tests (corpus, sanitizer driver)."""
