from helixd.cli.main import main

main()
