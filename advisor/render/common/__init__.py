"""What every page shares: tolerant reading of the JSON, the card view, HTML and Markdown
building blocks, colours and stylesheets."""
