"""``skhybrid reproduce NAME``: regenerate a paper's table or figure."""

from pathlib import Path

from ._common import _PLOT_HINT, CommandError, _use_matplotlib


def run_reproduce(args):
    from ..reproduce import REPRODUCTIONS, reproduce

    if args.list:
        width = max(len(name) for name in REPRODUCTIONS)
        for name, function in REPRODUCTIONS.items():
            summary = (function.__doc__ or "").strip().splitlines()
            print(f"{name:<{width}}  {summary[0] if summary else ''}".rstrip())
        return 0
    if not args.names:
        raise CommandError("give a reproduction NAME, 'all', or --list to see the names")
    names = list(REPRODUCTIONS) if args.names == ["all"] else args.names
    unknown = [name for name in names if name not in REPRODUCTIONS]
    if unknown:
        raise CommandError(
            f"unknown reproduction {unknown[0]!r}; choose 'all' or one of: "
            f"{', '.join(REPRODUCTIONS)}"
        )
    plot = _use_matplotlib()
    output = Path(args.output)
    for name in names:
        reproduction = reproduce(
            name, quick=args.quick, random_state=args.seed, progress=not args.no_progress
        )
        print(f"== {name}: {reproduction.title}")
        if reproduction.summary:
            print(reproduction.summary.rstrip())
        if plot:
            paths = reproduction.save(output)
        else:
            output.mkdir(parents=True, exist_ok=True)
            paths = [output / f"{name}.csv"]
            reproduction.write_csv(paths[0])
        print("wrote " + ", ".join(str(path) for path in paths))
    if not plot:
        print(f"no plots: matplotlib is not installed; {_PLOT_HINT}")
    return 0
