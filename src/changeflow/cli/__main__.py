from changeflow.cli import main

main()
