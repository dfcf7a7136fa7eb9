from heddle.cli.main import main

main()
