from lockkit.cli import run

run()
