from nexus_core.cli import main

main()
