"""Subcommands of the ``gpucore`` CLI (see ``gpucore.cli.COMMANDS``)."""
