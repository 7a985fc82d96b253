from ragplate.cli import main

main()
