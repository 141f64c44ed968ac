from helixd.daemon.app import main

main()
