"""Training the shipped default model: the corpus, the training loop, the evaluation, and the
precision study that makes the compact file the page loads."""
