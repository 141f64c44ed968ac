from helixd.cli.entry import main

main()
