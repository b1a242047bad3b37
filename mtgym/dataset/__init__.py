"""Offline-RL datasets of any registered policy's episodes, in the Minari format.

The data flow: ``episode`` plays one episode in the Gymnasium env while a registered policy
decides (its allocation encoded into the env's action mode, as imitation does) and keeps
every step as numpy arrays; ``store`` writes the episodes of one (scenario, policy) as a
Minari dataset with the env's spec (``recover_environment()`` builds the same env) and the
reference scores that ``minari.get_normalized_score`` divides by; ``cli`` is ``mtgym
dataset collect`` and ``mtgym dataset list``. Only ``store`` imports ``minari`` (the
``offline`` extra): the episodes themselves need nothing beyond mtgym.
"""
