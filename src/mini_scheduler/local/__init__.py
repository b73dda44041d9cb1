"""The local run (``make run``): the scheduler on this machine with moto as AWS, its targets in
this process. Never in the Lambda package: src/Makefile leaves this folder out of it."""
