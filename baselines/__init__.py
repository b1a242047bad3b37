"""Baseline policies (FreeTrain, MalleTrain, PAL, PM-First, heuristics), registered as
``mtgym.policies`` entry points; ``mtgym`` itself never imports this package.
"""
