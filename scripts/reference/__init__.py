"""Independent reference implementations of BERT (float64 numpy/PyTorch), the trainable PyTorch
model, and random-weight test models with the parity fixtures made from them."""
