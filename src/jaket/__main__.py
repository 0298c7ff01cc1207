from jaket.cli import main

raise SystemExit(main())
