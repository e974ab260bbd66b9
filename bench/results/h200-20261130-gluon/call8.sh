# Device call 8 of the 2026-11-30 Gluon part (nvidia-h200): the long forward points timed
# alternately (Gluon forward, forward.py, SDPA cuDNN; 4 rounds), final code.
#   PYTHONPATH=$PWD/python python3 bench/results/h200-20261130-gluon/call6_short.py long
