"""Learned schedulers (stable-baselines3, sb3-contrib) behind the ``mtgym`` policy interface;
``mtgym`` itself never imports this package.
"""
