"""gpucore: GPU solvers (with CPU twins) for influence analysis on social networks.

Subpackages: ``graph`` (I/O, CSR, ``.gcsr``), ``backend`` (cpu|cuda), ``random`` (keyed hash RNG),
``kernels`` (CUDA sources), ``oracle`` (independent Monte-Carlo checks), ``amcss`` (MERIT),
``im`` (IMM/gIM). See ``docs/`` and the README.
"""

__version__ = "0.1.0"
