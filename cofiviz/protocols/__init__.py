"""The papers' evaluation protocols: each cuts a :class:`~cofiviz.Ratings` table into a :class:`~cofiviz.Split`.

Every protocol is a function ``protocol(ratings, <parameters>, seed=0) -> Split``:

* **seeded and reproducible**: the same input, parameters and seed give the identical split; another
  seed gives another one. All randomness comes from one ``numpy.random.default_rng(seed)``.
* **vectorised**: the per-user random choice is one random key per rating, one sort by (user, key)
  and a per-user rank (``rank = position - indptr[user]``); a user's first N ranks are a uniformly
  random N-subset of that user's ratings. O(n log n), no Python loop over ratings or users.
* **honest about what it removes**: ``split.protocol`` records the protocol's ``name``, every parameter
  (``params``), the ``seed``, the paper it follows (``reference``), the input's size (``input``), each
  filter in order (``filters``: rule, threshold, number of users / items / ratings removed and their
  original ids), the totals (``dropped``) and the size of every part (``sizes``). Nothing is dropped
  silently. The dict is JSON-ready and is written to ``protocol.json`` by :meth:`Split.write`.

Index space
    All parts of a split share one index space holding exactly the users and items that appear in at
    least one part (train, valid, test, negatives, given); users and items removed by a filter leave
    it (their original ids are listed in ``protocol["filters"]``). This is the index space that
    :meth:`Split.read` rebuilds from the written files, so a split survives a write/read round trip
    with the same ``n_users`` and ``n_items``.

Protocols (registry names in brackets, see :data:`PROTOCOLS` and :func:`get`)
    * :func:`weak_generalization` [``weak``], with the presets :func:`cofirank_weak`
      [``cofirank-weak``] (CofiRank §6: N given, users with fewer than N + 10 ratings dropped) and
      :func:`lcr_weak` [``lcr-weak``] (LCR §5.3: N given + 10 validation, fewer than N + 20 dropped);
    * :func:`fixed_ratio` [``fixed-ratio``] (LCR §5.2: a fixed fraction, 0.5, of each user's ratings);
    * :func:`strong_generalization` [``strong``] (CofiRank §6 after Yu et al.: new users folded in);
    * :func:`top_n` [``top-n``] (GAPfm §5.1: held-out items plus 1000 sampled unrated items), and
      :func:`gapfm_top_n` [``gapfm-top-n``], the same with a validation part carved from the held-out items;
      :func:`gapfm_netflix` [``gapfm-netflix``], the paper's own protocol on the Netflix Prize: Given N from the
      training set minus the probe set, tested on the probe set (``datasets.netflix_prize`` marks it);
    * :func:`controversial_items` [``controversial``] (the blog post 'The rank 1 problem': test only
      on items whose ratings have a high variance or entropy).

:func:`carve_validation` holds a tenth of each user's training ratings out for a search that has no
validation part. :func:`make` runs a protocol by name with checked keyword parameters (what the CLI and the dashboards
call); :func:`parameters` lists a protocol's parameters and defaults. One module per family (``weak``,
``fixed_ratio``, ``strong``, ``top_n``, ``controversial``) defines and registers its protocols
(:mod:`cofiviz.protocols.registry`); what they share is in ``_common``.
"""

from .registry import OFFERED, PROTOCOLS, REFERENCES, Offered, allowed_parameters, get, make, parameters
from .weak import cofirank_weak, lcr_weak, weak_generalization
from .fixed_ratio import fixed_ratio
from .strong import strong_generalization
from .top_n import gapfm_netflix, gapfm_top_n, top_n
from .controversial import controversial_items
from .validation import carve_validation

__all__ = ["weak_generalization", "cofirank_weak", "lcr_weak", "fixed_ratio", "strong_generalization", "top_n",
           "gapfm_top_n", "gapfm_netflix", "controversial_items", "carve_validation", "PROTOCOLS", "get", "make",
           "parameters", "allowed_parameters", "REFERENCES", "OFFERED", "Offered"]
