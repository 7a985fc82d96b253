from ragplate.api.cli import main

main()
