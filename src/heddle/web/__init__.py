"""The browser faces served by `heddle serve`: the console SPA at /console and the chat widget
at /widget/heddle-chat.js. Their sources are npm packages under web/; `make web` builds them
into heddle/web/static/ (not committed), and this package only serves what was built."""
