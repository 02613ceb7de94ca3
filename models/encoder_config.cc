// EncoderConfig: filled in by the models work.
