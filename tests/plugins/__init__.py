"""Plugins as a contributor writes them: the docs' examples (docs/architecture.md) as modules, a test-only
engine, and `site/`, a folder holding a third-party package (demo_plugin) with its installed metadata."""
