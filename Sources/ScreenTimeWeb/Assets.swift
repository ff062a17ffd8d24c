/// The dashboard's one style sheet and one script, served from its own origin (the policy
/// allows nothing else). Made for a phone first; dark when the phone is; readable at 200 %.
enum Assets {
    static let css = """
        :root { color-scheme: light dark; --accent: #2563eb; --muted: #6b7280; --card: #f3f4f6; --warn: #b91c1c; }
        @media (prefers-color-scheme: dark) { :root { --accent: #60a5fa; --muted: #9ca3af; --card: #1f2937; --warn: #f87171; } }
        * { box-sizing: border-box; }
        body { font: 1rem/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 46rem; padding: 0 1rem 2rem; }
        header { display: flex; justify-content: space-between; align-items: center; padding: .8rem 0; }
        header .home { font-weight: 600; text-decoration: none; color: inherit; }
        h1 { font-size: 1.5rem; margin: .5rem 0; } h2 { font-size: 1.1rem; margin: 1.2rem 0 .4rem; }
        a { color: var(--accent); }
        .card { background: var(--card); border-radius: .8rem; padding: .8rem 1rem; margin: .8rem 0; }
        .card h2 { margin-top: 0; }
        .lead { margin-top: 0; } .note { color: var(--muted); font-size: .9rem; }
        .problem { color: var(--warn); font-weight: 600; }
        .reached { color: var(--warn); }
        label { display: block; margin: .6rem 0 .2rem; }
        form.inline label { display: inline; }
        input { font: inherit; padding: .5rem; border-radius: .4rem; border: 1px solid var(--muted); }
        form.card input { width: 100%; }
        button { font: inherit; padding: .55rem .9rem; margin: .4rem .4rem 0 0; border: 0; border-radius: .5rem;
          background: var(--accent); color: white; min-height: 2.75rem; }
        button.quiet { background: transparent; color: var(--accent); border: 1px solid var(--accent); }
        button:focus-visible, a:focus-visible, input:focus-visible, select:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
        .buttons { display: flex; flex-wrap: wrap; }
        .buttons form { margin: 0; }
        blockquote { margin: .3rem 0; padding-left: .8rem; border-left: 3px solid var(--muted); }
        svg { width: 100%; height: auto; }
        ul.plain { list-style: none; padding: 0; }
        ul.ranking { list-style: none; padding: 0; }
        ul.ranking li { display: grid; grid-template-columns: minmax(6rem, 1fr) 2fr auto; gap: .6rem; align-items: center; }
        meter { width: 100%; }
        select { font: inherit; padding: .5rem; border-radius: .4rem; border: 1px solid var(--muted); max-width: 100%; }
        form.stack { margin-top: .8rem; } form.stack select, form.stack > input { width: 100%; }
        ul.rules li, .rule { display: flex; justify-content: space-between; align-items: center; gap: .6rem; }
        ul.rules form, .rule form { margin: 0; }
        .times { display: flex; align-items: center; gap: .5rem; flex-wrap: wrap; } .times label { margin: 0; }
        label.check { display: flex; gap: .5rem; align-items: center; }
        footer { color: var(--muted); font-size: .85rem; margin-top: 2rem; }

        """

    /// Live asks: the server's event stream says the pending asks' ids; when they are not what
    /// the page shows, the page is loaded again (not while a field has the focus).
    static let javascript = """
        'use strict';
        (function () {
          var shown = document.body.dataset.asks;
          if (shown === undefined || !window.EventSource) { return; }
          var source = new EventSource('/events');
          source.addEventListener('asks', function (event) {
            var typing = document.activeElement && document.activeElement.matches('input, textarea, select');
            if (event.data !== shown && !typing) { shown = event.data; window.location.reload(); }
          });
          source.addEventListener('signedout', function () { source.close(); window.location.assign('/signin'); });
        })();

        """
}
