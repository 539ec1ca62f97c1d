from nexus_core.launch import main

main()
