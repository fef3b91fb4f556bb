from latencykernel.cli import main

main()
