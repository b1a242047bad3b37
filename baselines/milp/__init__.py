"""MILP allocators: FreeTrain (BFTrainer) and MalleTrain, with an exact count-level solver."""
