"""The ``skhybrid`` command line (also ``python -m skhybrid``): demo, estimate, ledger, reproduce."""

import argparse
import os
import sys

from ._commands._common import DEFAULT_METHOD, METHODS, CommandError
from ._commands._demo import run_demo
from ._commands._estimate import run_estimate
from ._commands._ledger import CREATED_LEDGERS, remove_created_ledgers, run_ledger
from ._commands._reproduce import run_reproduce

# -- the parser ---------------------------------------------------------------------------

_DESCRIPTION = """\
Differentially private statistics for users who trust the data collector to different
degrees: "tcm" users send raw values to a trusted curator (central DP), "lm" users
randomize on their own device (local DP), and each user may have their own epsilon.
Run "skhybrid COMMAND --help" for a command's options."""

_EPILOG = """\
examples:
  skhybrid demo --output results
  skhybrid estimate salaries.csv --value salary --trust group --epsilon 1 \\
      --bounds 0 2349033 --estimator kvh --json
  skhybrid estimate salaries.csv --value salary --trust group --epsilon 1 \\
      --bounds 0 2349033 --ledger budget.sqlite --user-id id --default-budget 3
  skhybrid ledger budget.sqlite
  skhybrid ledger budget.sqlite user 17
  skhybrid reproduce --list
  skhybrid reproduce avent-figure2 --quick --output figures"""

_ESTIMATE_EPILOG = "estimators:\n" + "\n".join(
    f"  {name:<11} {method.description}" + ("  [tcm users only]" if method.needs_tcm_only else "")
    for name, method in METHODS.items()
) + """

The hybrid strategies (kvh ... lm_only) need one epsilon per trust group; adpm accepts a
different epsilon for every user, tcm or lm; the others are trusted-curator estimators
(every user tcm, epsilon may differ, inf = public). Values are clipped to --bounds.
Errors in the input exit with status 2 and a message on stderr."""


def _seed(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer; got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer; got {text!r}")
    return value


def _add_ledger_parser(commands, formatter):
    ledger = commands.add_parser(
        "ledger", formatter_class=formatter,
        help="look at and manage a privacy ledger: summary, budgets, users, export",
        description=(
            "A privacy ledger written by 'skhybrid estimate --ledger' or\n"
            "skhybrid.accounting.PrivacyLedger: an SQLite FILE, or a postgresql:// URL.\n"
            "Without an ACTION: users, epsilon spent (quantiles), users with an exhausted\n"
            "budget, and the latest releases. Reading actions never create a file."
        ),
        epilog=(
            "examples:\n"
            "  skhybrid ledger budget.sqlite\n"
            "  skhybrid ledger budget.sqlite set-budget --user 17 --epsilon 3\n"
            "  skhybrid ledger budget.sqlite set-budget --csv budgets.csv --id-column id \\\n"
            "      --epsilon budget\n"
            "  skhybrid ledger budget.sqlite user 17 42\n"
            "  skhybrid ledger budget.sqlite export users.csv\n"
            "  skhybrid ledger budget.sqlite export trail.csv --user 17"
        ),
    )
    ledger.add_argument("file", metavar="FILE", help="the ledger file (or a postgresql:// URL)")
    ledger.add_argument("--releases", type=_seed, default=5, metavar="N",
                        help="how many of the latest releases to list (default: 5)")
    ledger.add_argument("--json", action="store_true", help="print JSON")
    actions = ledger.add_subparsers(title="actions", dest="action", metavar="ACTION")
    budget = actions.add_parser(
        "set-budget", formatter_class=formatter,
        help="set the budget of one or more users, or of every row of a CSV file",
        description="Set users' budgets (what they already spent is kept). Creates the "
                    "ledger file if absent.")
    budget.add_argument("--user", nargs="+", metavar="ID", help="the users' ids")
    budget.add_argument("--csv", metavar="FILE.csv", help="a CSV file of ids and budgets")
    budget.add_argument("--id-column", default="id", metavar="COL",
                        help="with --csv: the column of user ids (default: id)")
    budget.add_argument("--epsilon", required=True, metavar="EPS|COL",
                        help="the epsilon budget (>= 0, inf for no limit); with --csv, the "
                             "column that holds it")
    budget.add_argument("--delta", default=None, metavar="DELTA|COL",
                        help="the delta budget in [0, 1) (default: 0); with --csv, a column")
    budget.add_argument("--sep", default=None, metavar="SEP",
                        help="with --csv: the delimiter (default: sniffed)")
    user = actions.add_parser(
        "user", formatter_class=formatter,
        help="users' spend, remaining budget and audit trail",
        description="For each user: epsilon and delta spent and remaining, and every\n"
                    "release they took part in (time, estimator, mechanism, cost).")
    user.add_argument("ids", nargs="+", metavar="ID", help="user ids")
    user.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                      help="print JSON")
    export = actions.add_parser(
        "export", formatter_class=formatter,
        help="write the users (or the releases, or some users' audit trails) as CSV",
        description="Write a CSV file: by default every user's budget and spends; with\n"
                    "--releases the history of releases; with --user the audit trail of\n"
                    "those users (one row per user and release).")
    export.add_argument("output", metavar="OUT.csv", nargs="?", help="the CSV file to write")
    export.add_argument("--releases", action="store_true", help="export the releases")
    export.add_argument("--user", nargs="+", metavar="ID",
                        help="export these users' audit trails")
    ledger.set_defaults(handler=run_ledger)


def _build_parser():
    from . import __version__

    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="skhybrid", description=_DESCRIPTION, epilog=_EPILOG, formatter_class=formatter
    )
    parser.add_argument("--version", action="version", version=f"skhybrid {__version__}")
    commands = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", required=True
    )

    demo = commands.add_parser(
        "demo", formatter_class=formatter,
        help="the main job: every mean estimator on the bundled synthetic salaries",
        description=(
            "Fit every mean estimator that applies to a hybrid population on the bundled\n"
            "dataset (skhybrid.datasets.load_salaries: 252,540 SYNTHETIC salaries in US\n"
            "dollars, shaped like the University of California 2010 salaries, bounds 0 to\n"
            "2,349,033, public standard deviation 53,254). A random --tcm-fraction of the\n"
            "users trusts the curator (tcm), the others randomize locally (lm); everyone\n"
            "has --epsilon. Prints and draws: 1. this run's releases (the hybrids, both\n"
            "baselines, ADPM) with their expected errors against the true mean; 2. the\n"
            "theory (closed-form expected errors, this run marked): the hybrid's gain over\n"
            "the tcm share and epsilon with its computed peak, and a different epsilon per\n"
            "user (the paper's ADPM, its known-variance variant, UNI, PropDPM); 3. a\n"
            "budgeted model selection released on a privacy ledger, with each user's\n"
            "spend. Writes DIR/skhybrid-demo.csv and DIR/skhybrid-demo.png (the plot\n"
            "needs matplotlib: pip install \"skhybrid[plot]\")."
        ),
    )
    demo.add_argument("--output", metavar="DIR", default="skhybrid-demo",
                      help="directory for skhybrid-demo.csv and .png, created if absent "
                           "(default: ./skhybrid-demo)")
    demo.add_argument("--epsilon", type=float, default=1.0,
                      help="every user's privacy level (default: 1.0)")
    demo.add_argument("--tcm-fraction", type=float, default=0.002, metavar="FRACTION",
                      help="fraction of users who trust the curator, in (0, 1) (default: "
                           "0.002, near where the hybrid gains most at epsilon 1)")
    demo.add_argument("--seed", type=_seed, default=None, metavar="N",
                      help="seed of the privacy noise, for a reproducible simulation; default: "
                           "the operating system's secure randomness (a real release)")
    demo.set_defaults(handler=run_demo)

    estimate = commands.add_parser(
        "estimate", formatter_class=formatter, epilog=_ESTIMATE_EPILOG,
        help="a private mean of one column of a CSV file",
        description=(
            "Release a differentially private mean of one numeric column of a CSV file\n"
            "(one row per user) and its expected error. Read with Python's csv module:\n"
            "the first row holds the column names; UTF-8 with or without a byte-order\n"
            "mark; the delimiter is sniffed unless --sep gives it. Errors name the\n"
            "file's line numbers (the header is line 1)."
        ),
    )
    estimate.add_argument("file", metavar="FILE.csv", help="the CSV file, one row per user")
    estimate.add_argument("--value", required=True, metavar="COL",
                          help="column of the values to average")
    estimate.add_argument("--trust", metavar="COL",
                          help="column of trust groups: tcm / lm or true / false (true = tcm); "
                               "default: every user is tcm (with a warning)")
    estimate.add_argument("--epsilon", required=True, metavar="COL|FLOAT",
                          help="a column of per-user privacy levels (inf = public), or one "
                               "level for everyone")
    estimate.add_argument("--bounds", required=True, nargs=2, type=float, metavar=("LO", "HI"),
                          help="public, data-independent bounds of the values (LO < HI)")
    estimate.add_argument("--estimator", default=DEFAULT_METHOD, metavar="NAME",
                          help="one of: auto, " + ", ".join(METHODS) + " (see below; "
                               "hyphens work too); default: auto, which is kvh with a "
                               "private variance estimate when each trust group has one "
                               "epsilon, else adpm (any epsilon per user)")
    estimate.add_argument("--variance", type=float, metavar="V",
                          help="the known (public) variance of the values; default: "
                               "estimated privately with a small share of each user's "
                               "epsilon, as each estimator's variance='private' does")
    estimate.add_argument("--sep", metavar="SEP", default=None,
                          help="the CSV delimiter: a character, or tab / comma / semicolon / "
                               "pipe; default: sniffed from the file")
    estimate.add_argument("--decimal", metavar="MARK", default=".",
                          help="the decimal mark of the file's numbers: '.' (default) or ',' "
                               "(European CSVs: --decimal , with ; or tab as the delimiter)")
    estimate.add_argument("--skip-missing", action="store_true",
                          help="leave out the rows with a missing value (empty, NA, NaN, "
                               "null, None) in a column the command reads, and report how "
                               "many; default: such a row is an error. The remaining users "
                               "are the ones released on")
    estimate.add_argument("--clamp", action="store_true",
                          help="project the estimate onto --bounds (post-processing: the "
                               "error never grows, the estimate is no longer unbiased)")
    estimate.add_argument("--json", action="store_true",
                          help="print one JSON object: estimator, estimate, expected_rmse, "
                               "expected_mse, n_users, n_tcm, n_lm, epsilon (or null), "
                               "epsilon_column (or null), bounds, seeded, ledger, charged "
                               "(with --ledger: the users charged per epsilon)")
    estimate.add_argument("--seed", type=_seed, default=None, metavar="N",
                          help="seed of the privacy noise (simulations and tests only); "
                               "default: the operating system's secure randomness")
    estimate.add_argument("--ledger", metavar="FILE", default=None,
                          help="charge each user's privacy cost to this ledger file (created "
                               "if absent) before any noise is drawn; refuses, releasing "
                               "nothing, when a user's budget would be exceeded")
    estimate.add_argument("--user-id", metavar="COL", default=None,
                          help="the column of user ids the ledger charges (with --ledger)")
    estimate.add_argument("--default-budget", type=float, metavar="EPS", default=None,
                          help="epsilon budget of users new to the ledger (stored in it)")
    estimate.set_defaults(handler=run_estimate)

    _add_ledger_parser(commands, formatter)

    reproduce = commands.add_parser(
        "reproduce", formatter_class=formatter,
        help="regenerate a paper's figure or table (CSV + PNG)",
        description=(
            "Regenerate the papers' figures and tables: for each NAME, writes DIR/NAME.csv\n"
            "(the numbers) and DIR/NAME.png (the plot, needs matplotlib) and prints a\n"
            "summary comparing the result with the paper. 'all' runs every reproduction;\n"
            "--list shows the names. Reproductions are simulations: seeded (default 0)."
        ),
    )
    reproduce.add_argument("names", nargs="*", metavar="NAME",
                           help="reproduction names, or 'all'")
    reproduce.add_argument("--list", action="store_true", help="list the reproductions and exit")
    reproduce.add_argument("--quick", action="store_true",
                           help="fewer Monte Carlo trials or a coarser grid (a first look)")
    reproduce.add_argument("--output", metavar="DIR", default=".",
                           help="directory for NAME.csv and NAME.png (default: current)")
    reproduce.add_argument("--seed", type=_seed, default=0, metavar="N",
                           help="seed of the simulation (default: 0)")
    reproduce.add_argument("--no-progress", action="store_true",
                           help="no progress bar (it goes to stderr by default)")
    reproduce.set_defaults(handler=run_reproduce)
    return parser


def _negative_numbers_as_values(argv):
    """``argv`` with numbers like ``-1e3``, ``-inf`` and ``-0.5e2`` led by a space.

    argparse takes only ``-5`` and ``-0.5`` for numbers; any other word starting with
    ``-`` is an option to it (``--bounds -1e3 1e3`` would fail with "expected 2
    arguments"). No option of this command line reads as a number.
    """
    def is_number(word):
        try:
            float(word)
        except ValueError:
            return False
        return True

    return [f" {word}" if word.startswith("-") and is_number(word) else word for word in argv]


def main(argv=None):
    """Run the ``skhybrid`` command line.

    Parameters
    ----------
    argv : list of str or None, default=None
        The arguments after the program name; ``None`` reads ``sys.argv``.

    Returns
    -------
    status : int
        0 on success, 2 for a mistake in the input (the message goes to stderr).
        ``--help`` and argparse's own usage errors raise :class:`SystemExit`.
    """
    parser = _build_parser()
    args = parser.parse_args(_negative_numbers_as_values(sys.argv[1:] if argv is None else argv))
    CREATED_LEDGERS.clear()
    try:
        return args.handler(args)
    except CommandError as error:
        remove_created_ledgers()
        print(f"skhybrid {args.command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader closed the pipe (``skhybrid demo | head``): stop quietly, as Unix
        # tools do; pointing stdout at devnull avoids a second error at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
