from lockkit.cli import main

raise SystemExit(main())
