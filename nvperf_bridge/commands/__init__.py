"""One module per CLI command. Module level imports typer only; heavy imports go inside the functions."""
