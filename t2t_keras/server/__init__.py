"""t2t-server: a trained model kept hot behind HTTP (`app`, `api`, `metrics`, `serve`)."""
