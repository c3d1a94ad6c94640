"""Building a bundle's extensions: the build cache, the nvcc front, the precompiled header, narrow CUDA
headers, and builds started from a model's __init__ or forward."""
