"""Builds every stage. Stage 0 is pure Python; compiled stages add their extensions
here as they arrive."""
from setuptools import setup

setup()
