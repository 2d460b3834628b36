"""Features, not neurons: sparse autoencoders (SAEs) trained on any hook point's activations, saved in
SAELens's format, evaluated as SAELens reports them, and read feature by feature (examples, logit effects,
steering). Plain torch; the app builds its Features tab on it."""
